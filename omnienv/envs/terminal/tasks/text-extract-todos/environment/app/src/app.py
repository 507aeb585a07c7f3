"""Entry point. TODO(nobody): this docstring is not a comment."""
import sys

# TODO(alice): parse arguments with argparse
def main(argv):
    print("hello")  # TODO(bob): use logging
    return 0
# FIXME(carol): not a TODO
# todo(dave): lowercase does not count

if __name__ == "__main__":
    sys.exit(main(sys.argv))  #TODO: exit codes
