"""One astroid tree per file, built against the torch stubs the package ships."""
