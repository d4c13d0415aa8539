"""Reports on stored runs: layer 7, beside `gym._run`.

Reports and their statistics (rates with intervals, pass@k), training records of a run,
plots and the calibration of the LLM judge. The public front door is `gym.runs`.
"""
