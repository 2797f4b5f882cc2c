"""A small shop: the example project the recorder's end-to-end tests run on."""
