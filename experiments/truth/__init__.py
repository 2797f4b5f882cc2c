"""The truth-of-the-diff experiment (#5.4); the entry point is experiments/truth.py."""
