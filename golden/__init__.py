"""NumPy reference models, bit-exact with the RTL."""
