"""The parts of popef-toolkit's IPU bridge (ipu_bridge.py beside this folder
is the program): frames of the plugin protocol, access to the Poplar SDK
with the evidence table of its calls, metadata conversion, the run session
and import/export conversion. A package of its own, so that its module
names cannot shadow anything the SDK imports."""
