import sys

sys.path.insert(0, "/tests")
from tablecheck import grade_table  # noqa: E402
from verifylib import main  # noqa: E402

main(lambda: grade_table('errors_by_hour.csv'))
