"""From verified prompts to readings: the cut and its cache, the vocabulary, readings, layers, the scorer."""
