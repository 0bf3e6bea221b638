import{a,b,c}from"./chunk-U457C3G7.js";import"./chunk-WHJWJZOM.js";export{b as Credentials,c as TestOutcome,a as providerWords};
