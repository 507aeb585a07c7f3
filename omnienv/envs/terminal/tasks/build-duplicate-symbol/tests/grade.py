import sys

sys.path.insert(0, "/tests")
from buildcheck import grade_program  # noqa: E402
from verifylib import main  # noqa: E402

main(lambda: grade_program('inventory'))
