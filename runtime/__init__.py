"""tessera's runtime: tensors in chosen layouts, and (next) devices, loaded
modules and kernel launches behind one interface for cpu, cuda and mps."""
