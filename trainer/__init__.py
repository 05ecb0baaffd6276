"""The bundled MindSpore GPT trainer (installed as ``msdoctor_trainer``)."""
