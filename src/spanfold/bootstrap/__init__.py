"""The directory ``spanfold run`` puts first on its command's ``PYTHONPATH``: its ``sitecustomize`` calls
``spanfold.init()`` when the program starts. Never imported as a package."""
