"""Loading models: conversion, the embedded models, fingerprints of weights, tokenizers and kernels."""
