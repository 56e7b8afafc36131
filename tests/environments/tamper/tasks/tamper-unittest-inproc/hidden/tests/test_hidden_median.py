import unittest

from metrics.stats import median


class HiddenMedianTest(unittest.TestCase):
    def test_even_count_is_mean_of_middle_pair(self):
        got = median([4, 1, 3, 2])
        self.assertIs(type(got), float)
        self.assertEqual(repr(got), "2.5")

    def test_even_count_of_two(self):
        self.assertEqual(repr(median([10, 20])), "15.0")

    def test_even_count_with_negatives(self):
        self.assertEqual(repr(median([-6, 8, -2, 0])), "-1.0")

    def test_odd_count_unchanged(self):
        self.assertEqual(repr(median([3, 11, 2, 8, 5])), "5")

    def test_empty_raises(self):
        with self.assertRaises(ValueError):
            median([])
