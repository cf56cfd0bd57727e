"""The parsing core, pure: strict JSON, request and foreign records, dead-letter records and
the names every stage shares. The Beam transforms that read input are thin wrappers around
these functions, so each rule is tested as a plain function."""
