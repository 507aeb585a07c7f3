import unittest

from semver import Version, max_satisfying


class OrderTest(unittest.TestCase):
    def test_numeric(self):
        self.assertLess(Version.parse("1.9.0"), Version.parse("1.10.0"))

    def test_prerelease_lower(self):
        self.assertLess(Version.parse("1.0.0-rc.1"), Version.parse("1.0.0"))

    def test_build_ignored(self):
        self.assertEqual(Version.parse("1.0.0+abc"), Version.parse("1.0.0"))


class BumpTest(unittest.TestCase):
    def test_minor(self):
        self.assertEqual(str(Version.parse("1.2.3").bump("minor")), "1.3.0")


class ParseTest(unittest.TestCase):
    def test_v_prefix(self):
        self.assertEqual(str(Version.parse("v2.0.1")), "2.0.1")


class RangeTest(unittest.TestCase):
    def test_caret(self):
        self.assertEqual(max_satisfying(["1.2.0", "1.9.9", "2.0.0"], "^1.2.0"), "1.9.9")


if __name__ == "__main__":
    unittest.main()
