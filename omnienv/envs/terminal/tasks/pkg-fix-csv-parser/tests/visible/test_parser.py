import unittest

from minicsv import format_row, parse, to_dicts


class ParseTest(unittest.TestCase):
    def test_simple(self):
        self.assertEqual(parse("a,b\n1,2\n"), [["a", "b"], ["1", "2"]])

    def test_quoted_delimiter(self):
        self.assertEqual(parse('x,"1,5"\n'), [["x", "1,5"]])

    def test_escaped_quote(self):
        self.assertEqual(parse('"say ""hi"""\n'), [['say "hi"']])

    def test_trailing_empty(self):
        self.assertEqual(parse("a,"), [["a", ""]])

    def test_crlf(self):
        self.assertEqual(parse("a,b\r\nc,d\r\n"), [["a", "b"], ["c", "d"]])

    def test_unterminated(self):
        with self.assertRaises(ValueError):
            parse('"abc')


class DictsTest(unittest.TestCase):
    def test_semicolon(self):
        self.assertEqual(to_dicts("k;v\n1;2\n", delimiter=";"), [{"k": "1", "v": "2"}])


class FormatTest(unittest.TestCase):
    def test_round_trip(self):
        fields = ["plain", "with,comma", 'with "quote"', ""]
        self.assertEqual(parse(format_row(fields)), [fields])


if __name__ == "__main__":
    unittest.main()
