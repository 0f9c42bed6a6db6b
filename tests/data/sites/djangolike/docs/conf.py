# Django-like Sphinx configuration (the settings esrag reads are literals, as in Django's own).
import sys
from os.path import abspath, dirname, join

sys.path.append(abspath(join(dirname(__file__), "_ext")))

needs_sphinx = "4.5.0"
extensions = [
    "djangodocs",
    "sphinx.ext.extlinks",
    "sphinx.ext.intersphinx",
]
templates_path = ["_templates"]
source_suffix = ".txt"
root_doc = "contents"
project = "Django"
copyright = "Django Software Foundation and contributors"
version = "5.2"
release = version + ".dev"  # computed: not a literal, never evaluated
exclude_patterns = ["_build", "_theme", "requirements.txt"]
html_theme = "djangodocs"
