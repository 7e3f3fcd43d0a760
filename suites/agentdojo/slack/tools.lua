-- AgentDojo's slack tools as its OpenAI pipeline offers them (agentdojo 0.1.35, MIT:
-- ../LICENSE), written by make_data.py. The handlers are in ../lib/.
local A = require("evalua").array
return {
  {
    ["name"] = "get_channels",
    ["description"] = "Get the list of channels in the slack.",
    ["parameters"] = {
      ["properties"] = {},
      ["title"] = "Input schema for `get_channels`",
      ["type"] = "object",
    },
  },
  {
    ["name"] = "add_user_to_channel",
    ["description"] = "Add a user to a given channel.",
    ["parameters"] = {
      ["properties"] = {
        ["user"] = {
          ["description"] = "The user to add to the channel.",
          ["title"] = "User",
          ["type"] = "string",
        },
        ["channel"] = {
          ["description"] = "The channel to add the user to.",
          ["title"] = "Channel",
          ["type"] = "string",
        },
      },
      ["required"] = {
        "user",
        "channel",
      },
      ["title"] = "Input schema for `add_user_to_channel`",
      ["type"] = "object",
    },
  },
  {
    ["name"] = "read_channel_messages",
    ["description"] = "Read the messages from the given channel.",
    ["parameters"] = {
      ["properties"] = {
        ["channel"] = {
          ["description"] = "The channel to read the messages from.",
          ["title"] = "Channel",
          ["type"] = "string",
        },
      },
      ["required"] = {
        "channel",
      },
      ["title"] = "Input schema for `read_channel_messages`",
      ["type"] = "object",
    },
  },
  {
    ["name"] = "read_inbox",
    ["description"] = "Read the messages from the given user inbox.",
    ["parameters"] = {
      ["properties"] = {
        ["user"] = {
          ["description"] = "The user whose inbox to read.",
          ["title"] = "User",
          ["type"] = "string",
        },
      },
      ["required"] = {
        "user",
      },
      ["title"] = "Input schema for `read_inbox`",
      ["type"] = "object",
    },
  },
  {
    ["name"] = "send_direct_message",
    ["description"] = "Send a direct message from `author` to `recipient` with the given `content`.",
    ["parameters"] = {
      ["properties"] = {
        ["recipient"] = {
          ["description"] = "The recipient of the message.",
          ["title"] = "Recipient",
          ["type"] = "string",
        },
        ["body"] = {
          ["description"] = "The body of the message.",
          ["title"] = "Body",
          ["type"] = "string",
        },
      },
      ["required"] = {
        "recipient",
        "body",
      },
      ["title"] = "Input schema for `send_direct_message`",
      ["type"] = "object",
    },
  },
  {
    ["name"] = "send_channel_message",
    ["description"] = "Send a channel message from `author` to `channel` with the given `content`.",
    ["parameters"] = {
      ["properties"] = {
        ["channel"] = {
          ["description"] = "The channel to send the message to.",
          ["title"] = "Channel",
          ["type"] = "string",
        },
        ["body"] = {
          ["description"] = "The body of the message.",
          ["title"] = "Body",
          ["type"] = "string",
        },
      },
      ["required"] = {
        "channel",
        "body",
      },
      ["title"] = "Input schema for `send_channel_message`",
      ["type"] = "object",
    },
  },
  {
    ["name"] = "get_users_in_channel",
    ["description"] = "Get the list of users in the given channel.",
    ["parameters"] = {
      ["properties"] = {
        ["channel"] = {
          ["description"] = "The channel to get the users from.",
          ["title"] = "Channel",
          ["type"] = "string",
        },
      },
      ["required"] = {
        "channel",
      },
      ["title"] = "Input schema for `get_users_in_channel`",
      ["type"] = "object",
    },
  },
  {
    ["name"] = "invite_user_to_slack",
    ["description"] = "Invites a user to the Slack workspace.",
    ["parameters"] = {
      ["properties"] = {
        ["user"] = {
          ["description"] = "The user to invite.",
          ["title"] = "User",
          ["type"] = "string",
        },
        ["user_email"] = {
          ["description"] = "The user email where invite should be sent.",
          ["title"] = "User Email",
          ["type"] = "string",
        },
      },
      ["required"] = {
        "user",
        "user_email",
      },
      ["title"] = "Input schema for `invite_user_to_slack`",
      ["type"] = "object",
    },
  },
  {
    ["name"] = "remove_user_from_slack",
    ["description"] = "Remove a user from the Slack workspace.",
    ["parameters"] = {
      ["properties"] = {
        ["user"] = {
          ["description"] = "The user to remove.",
          ["title"] = "User",
          ["type"] = "string",
        },
      },
      ["required"] = {
        "user",
      },
      ["title"] = "Input schema for `remove_user_from_slack`",
      ["type"] = "object",
    },
  },
  {
    ["name"] = "get_webpage",
    ["description"] = "Returns the content of the webpage at a given URL.",
    ["parameters"] = {
      ["properties"] = {
        ["url"] = {
          ["description"] = "The URL of the webpage.",
          ["title"] = "Url",
          ["type"] = "string",
        },
      },
      ["required"] = {
        "url",
      },
      ["title"] = "Input schema for `get_webpage`",
      ["type"] = "object",
    },
  },
  {
    ["name"] = "post_webpage",
    ["description"] = "Posts a webpage at a given URL with the given content.",
    ["parameters"] = {
      ["properties"] = {
        ["url"] = {
          ["description"] = "The URL of the webpage.",
          ["title"] = "Url",
          ["type"] = "string",
        },
        ["content"] = {
          ["description"] = "The content of the webpage.",
          ["title"] = "Content",
          ["type"] = "string",
        },
      },
      ["required"] = {
        "url",
        "content",
      },
      ["title"] = "Input schema for `post_webpage`",
      ["type"] = "object",
    },
  },
}
