"""The real embedded models (gemma-3-270m, the default, and smollm2-135m), end to end: every test here is marked
slow (minutes on a cold machine, while each model is converted once)."""
