"""The discrete-event engine: simulator, ledger, allocation, view and auditor."""
