# pytest only honours `pytest_plugins` in the rootdir's conftest: the test suite drives the plugin through pytester.
pytest_plugins = ["pytester"]
