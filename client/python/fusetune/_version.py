# The project's version (CMakeLists.txt's project(VERSION); tests/python checks they agree).
__version__ = "0.1.0"
