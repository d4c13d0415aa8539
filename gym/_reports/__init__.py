"""Reports on stored runs: layer 7, beside `gym._run`.

Reports and their statistics (rates with intervals, pass@k), exports of run data, plots
and the calibration of judges. The public front door is `gym.runs`.
"""
