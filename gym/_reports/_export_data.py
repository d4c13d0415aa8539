"""Deprecated home of `gym._reports._records` (training records; "export" is a final state's).

Kept while gym/_cli/_runs.py, gym/_redteam/_infra.py and two tests still import
``export_records`` from here; the name is `write_records` now.
"""

from gym._reports._records import episode_record
from gym._reports._records import write_records as export_records

__all__ = ["episode_record", "export_records"]
