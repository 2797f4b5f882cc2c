def inside_venv():
    return 42
