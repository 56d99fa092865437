"""``capplan trial view``: one self-contained HTML page of one or more run folders.

- ``payload``  what the page embeds (run headers, the matrix index, one detail per trial)
- ``page``     the jinja2 rendering (autoescape on, data as escaped JSON, styles and script inline)
- ``write``    reading the runs and writing the page inside its output folder
"""
