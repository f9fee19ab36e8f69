"""Helpers that several metric families share. No family lives here, and a family imports another
family only through what is here."""
