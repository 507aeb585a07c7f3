import sys

sys.path.insert(0, "/tests")
from packagecheck import grade_package  # noqa: E402
from verifylib import main  # noqa: E402

main(lambda: grade_package(4))
