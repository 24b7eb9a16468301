"""The run's settings and the steps built from them, below the roof: plugin/ and cli/ both read them."""
