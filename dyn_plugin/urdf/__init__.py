"""URDF in and out.

Reading (:mod:`.reading`) is our own, over lxml, and looks only at what the dynamics use;
every number read is checked and a malformed one is an error that names the element.
Writing (:mod:`.writing`) is the one place URDF text is made: a model as URDF, and the URDF
a reference engine loads for a model (its source, with held joints and payloads).
"""

from .reading import MOVING_TYPES, SUPPORTED_TYPES, load_urdf, load_urdf_string
from .writing import JointElement, LinkElement, to_urdf, urdf_document, urdf_text, write_urdf

__all__ = ["JointElement", "LinkElement", "MOVING_TYPES", "SUPPORTED_TYPES", "load_urdf", "load_urdf_string",
           "to_urdf", "urdf_document", "urdf_text", "write_urdf"]
