"""Gavel (Narayanan et al., OSDI 2020): allocation LPs over GPU types, realised in rounds."""
