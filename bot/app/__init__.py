"""The application: the command line (``rigops``) and the checks it runs before starting a front end."""
