"""msdoctor: find the fault in a distributed MindSpore training job, name the rank and the evidence."""

__version__ = "0.1.0"
