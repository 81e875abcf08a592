"""What the read and write paths both understand of text: tokens, stated claims and their
values, references to time, dates as written into context, and passages of a turn. Below
both paths, importing neither."""
