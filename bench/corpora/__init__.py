"""The corpora every benchmark draws from, in one place (README.md says what each holds):
``static/`` (65 modules written here, each with a ``compile_example``), ``graphmend/`` (the
GraphMend paper's model sites, written here), ``realworld.py`` (examples over packages from the
registry) and ``hf_models.py`` (small configs of the installed transformers)."""
