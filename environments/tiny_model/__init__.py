"""The tiny locally built model: deterministic tokenizer, chat template, Qwen2-family config and weights."""

from environments.tiny_model.adapters import random_lora_adapter
from environments.tiny_model.build import build_tiny_model, cache_root
from environments.tiny_model.recipe import TinyModelRecipe

__all__ = ["TinyModelRecipe", "build_tiny_model", "cache_root", "random_lora_adapter"]
