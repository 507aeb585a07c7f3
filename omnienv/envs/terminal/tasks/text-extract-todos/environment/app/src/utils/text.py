def clean(s):
    return s.strip()  # TODO(bob): unicode whitespace


def words(s):
    # Not a todo: TODOS are elsewhere
    return s.split()
