"""The bottom layer every other capplan package stands on; it imports none of them.

Reading YAML and JSON inputs with positions and every input limit, located diagnostics and
did-you-mean, pydantic errors as locations, canonical JSON, the one redactor, names that
become paths, and the bounds every value is held to.
"""
