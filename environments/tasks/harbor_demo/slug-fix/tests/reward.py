"""Print 1 if the JUnit report shows every test ran and passed, else 0."""

import sys
import xml.etree.ElementTree as ET

try:
    suite = ET.parse(sys.argv[1]).getroot()
    suite = suite if suite.tag == "testsuite" else suite.find("testsuite")
    counts = {key: int(suite.get(key, "0")) for key in ("tests", "failures", "errors", "skipped")}
except (OSError, ET.ParseError, AttributeError, ValueError):
    print(0)
    sys.exit()
print(1 if counts["tests"] > 0 and counts["failures"] == counts["errors"] == counts["skipped"] == 0 else 0)
