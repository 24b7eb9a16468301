"""Unit tests, a folder per package folder and a module per package module: nothing here drives the plugin
through pytester or loads a real model (a tiny model whose logits are set by hand may score)."""
