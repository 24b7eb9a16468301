"""Loading models: conversion, the embedded models, fingerprints of weights, tokenizers and kernels."""

DTYPES = ("bfloat16", "float16", "float32")  # what a model may run in (--gotchas-dtype)
