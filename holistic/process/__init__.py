"""What every process shares: its cores, signals, supervision, run state and observability."""
