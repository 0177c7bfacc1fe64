"""Every sentence rigops says, and how results look as text: pure functions, dataclasses in, Messages out."""
