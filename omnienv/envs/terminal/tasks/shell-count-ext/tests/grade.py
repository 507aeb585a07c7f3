import sys

sys.path.insert(0, "/tests")
from scriptcases import grade_script  # noqa: E402
from verifylib import main  # noqa: E402

main(lambda: grade_script('count_ext.sh'))
