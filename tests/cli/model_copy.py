"""A throwaway copy of a model folder for CLI tests that change its side files (imported by
test_flags_messages_cli.py and test_hostile_files_cli.py)."""

import os
import shutil


def model_copy(model, work, name, tokenizer_config=None):
    """`model`'s side files copied into work/name, its weights linked (no 25 MB copy per test);
    tokenizer_config.json replaced by the given text when given. Returns the folder."""
    d = os.path.join(work, name)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    for f in os.listdir(model):
        src = os.path.join(model, f)
        if f.endswith(".safetensors"):
            os.symlink(os.path.abspath(src), os.path.join(d, f))
        elif os.path.isfile(src):
            shutil.copy(src, d)
    if tokenizer_config is not None:
        with open(os.path.join(d, "tokenizer_config.json"), "w") as f:
            f.write(tokenizer_config)
    return d
