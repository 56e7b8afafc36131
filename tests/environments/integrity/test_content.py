from __future__ import annotations

import pytest

from environments.integrity.content import code_findings


@pytest.mark.parametrize(
    "source",
    [
        "import atexit, os\natexit.register(lambda: os._exit(0))\n",
        "from _pytest import reports\n",
        "import pytest\npytest.TestReport.from_item_and_call = staticmethod(lambda i, c: None)\n",
        "import sys\nsys.modules['pytest'] = object()\n",
        "import unittest.result as r\n",
        "import unittest\nsetattr(unittest.TestResult, 'wasSuccessful', lambda self: True)\n",
        "class Any:\n    def __eq__(self, other):\n        return True\n",
        "import builtins\nbuiltins.AssertionError = Exception\n",
        "exec(__import__('base64').b64decode('cHJpbnQoMSk='))\n",
        "import sys\nsys.settrace(None)\n",
    ],
)
def test_python_that_reaches_into_the_runner_is_found(source):
    assert code_findings("pkg/mod.py", source.encode())


@pytest.mark.parametrize(
    "source",
    [
        "import re\n\ndef slugify(text):\n    return re.sub('[^a-z]+', '-', text.lower()).strip('-')\n",
        "import pytest\n\ndef helper():\n    return pytest.approx(1.0)\n",
        "import sys\n\nif __name__ == '__main__':\n    print(sys.argv)\n    sys.exit(0)\n",
        "class Money:\n    def __eq__(self, other):\n"
        "        return isinstance(other, Money) and self.cents == other.cents\n",
        "def broken(:\n",
    ],
)
def test_ordinary_solution_code_is_not_flagged(source):
    assert code_findings("pkg/mod.py", source.encode()) == []


@pytest.mark.parametrize(
    "source",
    [
        "const assert = require('node:assert/strict');\nassert.deepStrictEqual = () => {};\n",
        "process.exit(0);\n",
        "process.on('exit', () => { process.exitCode = 0; });\n",
        "require.cache[require.resolve('x')] = {};\n",
        "const h = {};\nError.captureStackTrace(h);\nconst caller = h.stack;\n",
        "const line = new Error().stack.split('\\n')[2];\n",
        "const text = require('fs').readFileSync('test/arrays.test.js', 'utf8');\n",
    ],
)
def test_javascript_that_reaches_into_the_runner_is_found(source):
    assert code_findings("src/x.js", source.encode())


def test_ordinary_javascript_and_comments_are_not_flagged():
    source = b"// process.exit(0) is wrong\nfunction add(a, b) { return a + b; }\nmodule.exports = { add };\n"
    assert code_findings("src/x.js", source) == []
    assert code_findings("README.md", b"process.exit(0)") == []
    stack = b"class Stack { constructor() { this.stack = []; } }\nmodule.exports = { Stack };\n"
    assert code_findings("src/stack.js", stack) == []


def test_a_new_conftest_with_hooks_is_flagged_but_fixtures_and_markers_are_not():
    from environments.integrity.content import conftest_findings

    hook = b"def pytest_pyfunc_call(pyfuncitem):\n    return True\n"
    assert [f.rule for f in conftest_findings(hook)] == ["runner_hook"]
    assert conftest_findings(b"collect_ignore = ['tests/test_hidden.py']\n")
    fixture = b"import pytest\n\n@pytest.fixture\ndef zones():\n    return ['eu']\n"
    markers = b'def pytest_configure(config):\n    config.addinivalue_line("markers", "money: m")\n'
    assert conftest_findings(fixture) == [] and conftest_findings(markers) == []
    sneaky = markers + b"    config.option.collectonly = True\n"
    assert conftest_findings(sneaky)


def test_importing_a_module_that_ends_the_process_is_flagged_but_a_guarded_main_is_not():
    assert code_findings("pkg/m.py", b"import sys\nsys.exit(0)\n")
    assert code_findings("pkg/m.py", b"raise SystemExit\n")
    assert code_findings("pkg/m.py", b"import sys\nif __name__ == '__main__':\n    sys.exit(0)\n") == []
    assert code_findings("scratch.py", b"import sys\nsys.exit(0)\n", imported=False) == []
