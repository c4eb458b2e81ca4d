"""Goodput-optimising policies: Pollux (Qiao et al., OSDI '21) and Sia (Jayaram Subramanya
et al., SOSP '23), with the machinery they share (`common`)."""
