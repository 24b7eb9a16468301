"""The test suite, in the package's shape: unit/<folder>/ holds one module per package module (no pytester, no
real model), plugin/ drives the plugin through pytester, e2e/ runs the real embedded models (marked slow), and
helpers/ holds what several modules share. Each folder is a package, so that modules in different folders may
share a name (unit/plugin/test_options.py tests options.py, plugin/test_options.py the options on a command
line)."""
