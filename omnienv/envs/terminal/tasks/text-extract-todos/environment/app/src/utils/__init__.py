# TODO(hank): re-export helpers
