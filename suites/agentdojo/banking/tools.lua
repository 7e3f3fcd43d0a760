-- AgentDojo's banking tools as its OpenAI pipeline offers them (agentdojo 0.1.35, MIT:
-- ../LICENSE), written by make_data.py. The handlers are in ../lib/.
local A = require("evalua").array
return {
  {
    ["name"] = "get_iban",
    ["description"] = "Get the IBAN of the current bank account.",
    ["parameters"] = {
      ["properties"] = {},
      ["title"] = "Input schema for `get_iban`",
      ["type"] = "object",
    },
  },
  {
    ["name"] = "send_money",
    ["description"] = "Sends a transaction to the recipient.",
    ["parameters"] = {
      ["properties"] = {
        ["recipient"] = {
          ["description"] = "IBAN of the recipient",
          ["title"] = "Recipient",
          ["type"] = "string",
        },
        ["amount"] = {
          ["description"] = "Amount of the transaction",
          ["title"] = "Amount",
          ["type"] = "number",
        },
        ["subject"] = {
          ["description"] = "Subject of the transaction",
          ["title"] = "Subject",
          ["type"] = "string",
        },
        ["date"] = {
          ["description"] = "Date of the transaction",
          ["title"] = "Date",
          ["type"] = "string",
        },
      },
      ["required"] = {
        "recipient",
        "amount",
        "subject",
        "date",
      },
      ["title"] = "Input schema for `send_money`",
      ["type"] = "object",
    },
  },
  {
    ["name"] = "schedule_transaction",
    ["description"] = "Schedule a transaction.",
    ["parameters"] = {
      ["properties"] = {
        ["recipient"] = {
          ["description"] = "IBAN of the recipient",
          ["title"] = "Recipient",
          ["type"] = "string",
        },
        ["amount"] = {
          ["description"] = "Amount of the transaction",
          ["title"] = "Amount",
          ["type"] = "number",
        },
        ["subject"] = {
          ["description"] = "Subject of the transaction",
          ["title"] = "Subject",
          ["type"] = "string",
        },
        ["date"] = {
          ["description"] = "Next date of the transaction",
          ["title"] = "Date",
          ["type"] = "string",
        },
        ["recurring"] = {
          ["description"] = "Is the transaction recurring",
          ["title"] = "Recurring",
          ["type"] = "boolean",
        },
      },
      ["required"] = {
        "recipient",
        "amount",
        "subject",
        "date",
        "recurring",
      },
      ["title"] = "Input schema for `schedule_transaction`",
      ["type"] = "object",
    },
  },
  {
    ["name"] = "update_scheduled_transaction",
    ["description"] = "Update a scheduled transaction.",
    ["parameters"] = {
      ["properties"] = {
        ["id"] = {
          ["description"] = "ID of the transaction (mandatory)",
          ["title"] = "Id",
          ["type"] = "integer",
        },
        ["recipient"] = {
          ["anyOf"] = {
            {
              ["type"] = "string",
            },
            {
              ["type"] = "null",
            },
          },
          ["default"] = nil,
          ["description"] = "IBAN of the recipient (optional)",
          ["title"] = "Recipient",
        },
        ["amount"] = {
          ["anyOf"] = {
            {
              ["type"] = "number",
            },
            {
              ["type"] = "null",
            },
          },
          ["default"] = nil,
          ["description"] = "Amount of the transaction (optional)",
          ["title"] = "Amount",
        },
        ["subject"] = {
          ["anyOf"] = {
            {
              ["type"] = "string",
            },
            {
              ["type"] = "null",
            },
          },
          ["default"] = nil,
          ["description"] = "Subject of the transaction (optional)",
          ["title"] = "Subject",
        },
        ["date"] = {
          ["anyOf"] = {
            {
              ["type"] = "string",
            },
            {
              ["type"] = "null",
            },
          },
          ["default"] = nil,
          ["description"] = "Next date of the transaction (optional)",
          ["title"] = "Date",
        },
        ["recurring"] = {
          ["anyOf"] = {
            {
              ["type"] = "boolean",
            },
            {
              ["type"] = "null",
            },
          },
          ["default"] = nil,
          ["description"] = "Is the transaction recurring (optional)",
          ["title"] = "Recurring",
        },
      },
      ["required"] = {
        "id",
      },
      ["title"] = "Input schema for `update_scheduled_transaction`",
      ["type"] = "object",
    },
  },
  {
    ["name"] = "get_balance",
    ["description"] = "Get the balance of the account.",
    ["parameters"] = {
      ["properties"] = {},
      ["title"] = "Input schema for `get_balance`",
      ["type"] = "object",
    },
  },
  {
    ["name"] = "get_most_recent_transactions",
    ["description"] = "Get the list of the most recent transactions, e.g. to summarize the last n transactions.",
    ["parameters"] = {
      ["properties"] = {
        ["n"] = {
          ["default"] = 100,
          ["description"] = "Number of transactions to return",
          ["title"] = "N",
          ["type"] = "integer",
        },
      },
      ["title"] = "Input schema for `get_most_recent_transactions`",
      ["type"] = "object",
    },
  },
  {
    ["name"] = "get_scheduled_transactions",
    ["description"] = "Get the list of scheduled transactions.",
    ["parameters"] = {
      ["properties"] = {},
      ["title"] = "Input schema for `get_scheduled_transactions`",
      ["type"] = "object",
    },
  },
  {
    ["name"] = "read_file",
    ["description"] = "Reads the contents of the file at the given path.",
    ["parameters"] = {
      ["properties"] = {
        ["file_path"] = {
          ["description"] = "The path to the file to read.",
          ["title"] = "File Path",
          ["type"] = "string",
        },
      },
      ["required"] = {
        "file_path",
      },
      ["title"] = "Input schema for `read_file`",
      ["type"] = "object",
    },
  },
  {
    ["name"] = "get_user_info",
    ["description"] = "Get the user information.",
    ["parameters"] = {
      ["properties"] = {},
      ["title"] = "Input schema for `get_user_info`",
      ["type"] = "object",
    },
  },
  {
    ["name"] = "update_password",
    ["description"] = "Update the user password.",
    ["parameters"] = {
      ["properties"] = {
        ["password"] = {
          ["description"] = "New password for the user",
          ["title"] = "Password",
          ["type"] = "string",
        },
      },
      ["required"] = {
        "password",
      },
      ["title"] = "Input schema for `update_password`",
      ["type"] = "object",
    },
  },
  {
    ["name"] = "update_user_info",
    ["description"] = "Update the user information.",
    ["parameters"] = {
      ["properties"] = {
        ["first_name"] = {
          ["anyOf"] = {
            {
              ["type"] = "string",
            },
            {
              ["type"] = "null",
            },
          },
          ["default"] = nil,
          ["description"] = "First name of the user (optional)",
          ["title"] = "First Name",
        },
        ["last_name"] = {
          ["anyOf"] = {
            {
              ["type"] = "string",
            },
            {
              ["type"] = "null",
            },
          },
          ["default"] = nil,
          ["description"] = "Last name of the user (optional)",
          ["title"] = "Last Name",
        },
        ["street"] = {
          ["anyOf"] = {
            {
              ["type"] = "string",
            },
            {
              ["type"] = "null",
            },
          },
          ["default"] = nil,
          ["description"] = "Street of the user (optional)",
          ["title"] = "Street",
        },
        ["city"] = {
          ["anyOf"] = {
            {
              ["type"] = "string",
            },
            {
              ["type"] = "null",
            },
          },
          ["default"] = nil,
          ["description"] = "City of the user (optional)",
          ["title"] = "City",
        },
      },
      ["title"] = "Input schema for `update_user_info`",
      ["type"] = "object",
    },
  },
}
