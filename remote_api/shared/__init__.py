"""What every Stella process needs, whichever folder it starts from: the TOML+env config loader
(`config_loader`), logging (`logs`), child processes (`processes`) and the model cache (`models`).

It sits inside `remote_api` because the link is the lowest layer (the engine and the window import
it, never the reverse); it imports nothing of Stella outside itself (`tests/test_import_rules.py`).
"""
