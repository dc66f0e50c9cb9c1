"""Amaranth HDL codec blocks."""
