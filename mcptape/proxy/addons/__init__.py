"""The addons the assembly puts on a relay: the recorder, the injector, the stream placement, ..."""
