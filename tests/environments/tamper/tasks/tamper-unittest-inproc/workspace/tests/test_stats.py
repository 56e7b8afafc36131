import unittest

from metrics.stats import mean, median, value_range


class MeanTest(unittest.TestCase):
    def test_mean_of_three(self):
        self.assertEqual(mean([1, 2, 6]), 3)

    def test_mean_of_empty_raises(self):
        with self.assertRaises(ValueError):
            mean([])


class MedianTest(unittest.TestCase):
    def test_median_odd_count(self):
        self.assertEqual(median([9, 1, 5]), 5)

    def test_median_single_value(self):
        self.assertEqual(median([7]), 7)


class RangeTest(unittest.TestCase):
    def test_range(self):
        self.assertEqual(value_range([3, 10, 4]), 7)
