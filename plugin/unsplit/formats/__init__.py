"""On-disk format decoders: bytes in, frozen records out, DecodeError on anything malformed.

One module per structure (bb_addr_map, bat, split_info, esl, mip, leb128); none of them opens
files or knows about debuggers. Each cites the specification it follows.
"""
