"""Gavel (Narayanan et al., OSDI 2020): allocation LPs over GPU types, realised in rounds.

`lp` (the LPs on HiGHS), `mechanism` (the round-based mechanism every policy shares),
`realisation` (how it realises X over time: Gavel's rounds, or time slices with `exact`),
`policies` (LP policies: max-min fairness, finish-time fairness, makespan, throughput,
cost), `fifo` (Gavel's FIFO), `packing` (space sharing), `hierarchical` (fairness across
users or VCs, then within), `baselines` (Gavel's own baselines as its figures ran
them: `gavel_isolated`, `gavel_gandiva`, `gavel_allox`).
"""
